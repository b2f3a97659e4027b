"""pymc_trees.interpret: variable importance, partial dependence and ICE curves.

The exact tests use hand-built forests (PackedForest objects written node by node, encoded
into a DataTree's ``forests`` group as ``pm.sample`` would) and compare with a plain Python
walk of the trees; then a small real fit runs end to end, and the boosting curves are
checked against scikit-learn's brute-force partial dependence.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402

import pymc_trees as pmt  # noqa: E402
from pymc_trees import interpret  # noqa: E402
from pymc_trees.interpret import sources  # noqa: E402
from pymc_trees.core.packed import NODE_DTYPE, PackedForest  # noqa: E402
from pymc_trees.bart.term.trace_io import encode_forests  # noqa: E402

LEVELS = ("blue", "green", "red")  # codes 0, 1, 2 of the column "colour"
OFFSET = 0.1


def _tree(*nodes):
    """Nodes in the packed pair layout, each (feature, left, threshold, value, missing_left,
    cats)."""
    return np.array(list(nodes), dtype=NODE_DTYPE)


def _leaf(v):
    return (-1, -1, 0.0, v, 1, 0)


def _forest(*trees) -> PackedForest:
    sizes = [t.size for t in trees]
    start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    nodes = []
    for s, t in zip(start, trees):
        t = t.copy()
        t["left"] = np.where(t["left"] >= 0, t["left"] + s, -1)
        nodes.append(t)
    return PackedForest(start, np.concatenate(nodes), OFFSET)


def _bits(*codes) -> int:
    return sum(1 << c for c in codes)


# columns: 0 "x" numeric, 1 "colour" categorical, 2 "z" numeric (never split)
TREES1 = (
    # x <= 0.5 (NaN left) ? 1.0 : (colour in {red} ? 2.0 : -1.0)
    _tree((0, 1, 0.5, 0, 1, 0), _leaf(1.0), (1, 3, 0.0, 0, 0, _bits(2)), _leaf(2.0),
          _leaf(-1.0)),
    # colour in {blue, green} (NaN right) ? (x <= 0.2 (NaN right) ? 0.5 : -0.5) : 3.0
    _tree((1, 1, 0.0, 0, 0, _bits(0, 1)), (0, 3, 0.2, 0, 0, 0), _leaf(3.0), _leaf(0.5),
          _leaf(-0.5)),
    _tree(_leaf(0.25)),
)
TREES2 = (
    _tree((0, 1, 0.7, 0, 0, 0), _leaf(-1.0), _leaf(1.0)),
    _tree((0, 1, 0.3, 0, 1, 0), _leaf(0.2), _leaf(-0.2)),
    _tree((1, 1, 0.0, 0, 1, _bits(1)), _leaf(0.3), _leaf(-0.3)),
)
F1 = _forest(*TREES1)
F2 = _forest(*TREES2)
F3 = _forest(_tree(_leaf(0.0)), _tree(_leaf(1.0)), _tree(_leaf(-0.5)))  # stumps only
# internal nodes per column (x, colour, z), counted by hand
HAND_COUNTS = {id(F1): (2, 2, 0), id(F2): (2, 1, 0), id(F3): (0, 0, 0)}
DRAWS = [[F1, F2, F1], [F2, F3, F2]]  # (chain, draw)


def _frame(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=n)
    x[rng.uniform(size=n) < 0.2] = np.nan
    colour = pd.Categorical(rng.choice(LEVELS, n), categories=LEVELS)
    colour[rng.uniform(size=n) < 0.15] = np.nan
    return pd.DataFrame({"x": x, "colour": colour, "z": rng.normal(size=n)})


def _idata(draws=DRAWS, outputs=None):
    schema, _ = pmt.TableSchema.from_training(_frame(20, 0))
    arr = np.empty((len(draws), len(draws[0])), object)
    for c, row in enumerate(draws):
        for d, fr in enumerate(row):
            arr[c, d] = fr
    ds = encode_forests("f", arr, schema.names, schema.p, outputs=outputs, schema=schema)
    return xr.DataTree.from_dict({"forests": ds}), schema


def _walk(forest: PackedForest, A: np.ndarray) -> np.ndarray:
    """The forest at the encoded rows A, one row and one node at a time."""
    out = np.full(A.shape[0], forest.offset)
    nodes = forest.nodes
    for i, row in enumerate(A):
        for t in range(forest.m):
            k = int(forest.start[t])
            while nodes[k]["feature"] >= 0:
                nd = nodes[k]
                x = row[nd["feature"]]
                if np.isnan(x):
                    go_left = bool(nd["missing_left"])
                elif nd["cats"] != 0:
                    go_left = bool((int(nd["cats"]) >> int(x)) & 1)
                else:
                    go_left = x <= nd["threshold"]
                k = int(nd["left"]) + (0 if go_left else 1)
            out[i] += nodes[k]["value"]
    return out


def test_hand_forests_survive_encoding():
    idata, _ = _idata()
    back = pmt.forests(idata, "f")
    for c, row in enumerate(DRAWS):
        for d, fr in enumerate(row):
            got = back.values[c, d]
            np.testing.assert_array_equal(got.start, fr.start)
            for field in ("feature", "left", "value", "missing_left", "cats"):
                np.testing.assert_array_equal(got.nodes[field], fr.nodes[field])


def test_inclusion_proportions_equal_a_hand_count():
    idata, _ = _idata()
    imp = interpret.variable_importance(idata, kind="inclusion")
    assert imp.dims == ("chain", "draw", "column")
    assert list(imp["column"].values) == ["x", "colour", "z"]
    assert imp.attrs["kind"] == "inclusion" and imp.attrs["source"] == "bart"
    for c, row in enumerate(DRAWS):
        for d, fr in enumerate(row):
            counts = np.array(HAND_COUNTS[id(fr)], float)
            if counts.sum() == 0:
                assert np.all(np.isnan(imp.values[c, d]))
            else:
                np.testing.assert_allclose(imp.values[c, d], counts / counts.sum(), rtol=0,
                                           atol=1e-15)


def test_inclusion_and_curves_per_output_of_a_two_output_term():
    # a term of shape (2, n) with m = 3: output 0 is F1's trees, output 1 is F2's
    both = _forest(*TREES1, *TREES2)
    idata, schema = _idata([[both, both]], outputs=2)
    imp = interpret.variable_importance(idata, kind="inclusion")
    assert imp.dims == ("chain", "draw", "output", "column")
    np.testing.assert_allclose(imp.values[0, 0, 0], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(imp.values[0, 1, 1], [2 / 3, 1 / 3, 0.0])
    X = _frame(15, 3)
    A = schema.encode(X)
    res = interpret.partial_dependence(idata, X, "x", grid=[0.1, 0.6], kind="both")
    assert res["average"].dims == ("chain", "draw", "output", "x")
    for out, fr in ((0, F1), (1, F2)):  # every output carries the offset (as pmt.predict)
        for g, v in enumerate([0.1, 0.6]):
            Av = A.copy()
            Av[:, 0] = v
            np.testing.assert_allclose(res["individual"].values[0, 1, out, :, g],
                                       _walk(fr, Av), rtol=1e-13)


def test_partial_dependence_1d_numeric_equals_brute_force_and_ice_equals_predictions():
    idata, schema = _idata()
    X = _frame(25, 1)
    A = schema.encode(X)
    grid = [0.05, 0.25, 0.5, 0.65, 0.9, np.nan]
    res = interpret.partial_dependence(idata, X, "x", grid=grid, kind="both")
    assert set(res.data_vars) == {"average", "individual"}
    assert res["average"].dims == ("chain", "draw", "x")
    assert res["individual"].dims == ("chain", "draw", "obs", "x")
    np.testing.assert_array_equal(res["x"].values, grid)
    assert res.attrs["columns"] == ["x"] and res.attrs["kinds"] == ["numeric"]
    for c, row in enumerate(DRAWS):
        for d, fr in enumerate(row):
            for g, v in enumerate(grid):
                Av = A.copy()
                Av[:, 0] = v
                ice = _walk(fr, Av)
                np.testing.assert_allclose(res["individual"].values[c, d, :, g], ice,
                                           rtol=1e-13, atol=1e-13)
                np.testing.assert_allclose(res["average"].values[c, d, g], ice.mean(),
                                           rtol=1e-13, atol=1e-13)
    # ICE at one grid value equals pmt.predict at the rows with x set to it (up to the order
    # of the sum: the trees that do not read x are summed first)
    Xv = X.assign(x=0.65)
    np.testing.assert_allclose(res["individual"].sel(x=0.65).values,
                               pmt.predict(idata, Xv).values, rtol=1e-13, atol=1e-13)


def test_partial_dependence_default_grids():
    idata, _ = _idata()
    X = _frame(200, 2)
    res = interpret.partial_dependence(idata, X, "x", grid_resolution=7)
    x = X["x"].dropna().to_numpy()
    np.testing.assert_allclose(res["x"].values, np.quantile(x, np.linspace(0.05, 0.95, 7)))
    res = interpret.partial_dependence(idata, X.iloc[:4], "x", grid_resolution=7)
    np.testing.assert_array_equal(res["x"].values, np.unique(X["x"].iloc[:4].dropna()))
    res = interpret.partial_dependence(idata, X, "colour")
    assert list(res["colour"].values) == list(LEVELS)


def test_partial_dependence_categorical_and_2d_equal_brute_force():
    idata, schema = _idata()
    X = _frame(18, 4)
    A = schema.encode(X)
    res = interpret.partial_dependence(idata, X, "colour", kind="both")
    assert list(res["colour"].values) == list(LEVELS)
    assert res.attrs["kinds"] == ["categorical"]
    res2 = interpret.partial_dependence(idata, X, ["x", "colour"],
                                        grid={"x": [0.1, 0.4, 0.8], "colour": ["red", "blue"]},
                                        kind="both")
    assert res2["average"].dims == ("chain", "draw", "x", "colour")
    assert res2["individual"].dims == ("chain", "draw", "obs", "x", "colour")
    assert list(res2["colour"].values) == ["red", "blue"]
    for c, row in enumerate(DRAWS):
        for d, fr in enumerate(row):
            for code, label in enumerate(LEVELS):
                Av = A.copy()
                Av[:, 1] = code
                ice = _walk(fr, Av)
                np.testing.assert_allclose(res["individual"].sel(colour=label).values[c, d],
                                           ice, rtol=1e-13, atol=1e-13)
                np.testing.assert_allclose(res["average"].sel(colour=label).values[c, d],
                                           ice.mean(), rtol=1e-13, atol=1e-13)
            for xv in (0.1, 0.4, 0.8):
                for label in ("red", "blue"):
                    Av = A.copy()
                    Av[:, 0] = xv
                    Av[:, 1] = LEVELS.index(label)
                    ice = _walk(fr, Av)
                    got = res2.sel(x=xv, colour=label)
                    np.testing.assert_allclose(got["individual"].values[c, d], ice,
                                               rtol=1e-13, atol=1e-13)
                    np.testing.assert_allclose(got["average"].values[c, d], ice.mean(),
                                               rtol=1e-13, atol=1e-13)


def test_permutation_importance_equals_brute_force_and_is_zero_for_an_unused_column():
    idata, schema = _idata()
    X = _frame(30, 5)
    A = schema.encode(X)
    imp = interpret.variable_importance(idata, X, kind="permutation", n_repeats=3, rng=11)
    assert imp.dims == ("chain", "draw", "column") and imp.attrs["n_repeats"] == 3
    # z is never split on: exactly 0 in every draw
    assert np.all(imp.sel(column="z").values == 0.0)
    # brute force with the documented order of permutations: repeat by repeat, column by
    # column, rng.permutation(n) each
    rng = np.random.default_rng(11)
    perms = [[rng.permutation(A.shape[0]) for _ in range(3)] for _ in range(3)]  # [r][j]
    for c, row in enumerate(DRAWS):
        for d, fr in enumerate(row):
            f = _walk(fr, A)
            for j in range(3):
                num = 0.0
                for r in range(3):
                    Ap = A.copy()
                    Ap[:, j] = A[perms[r][j], j]
                    num += np.mean((f - _walk(fr, Ap)) ** 2) / 3
                if f.var() > 0:
                    want = num / f.var()
                else:
                    want = 0.0 if num == 0 else np.nan
                np.testing.assert_allclose(imp.values[c, d, j], want, rtol=1e-12,
                                           equal_nan=True)
    assert imp.values[0, 0, 0] > 0.05 and imp.values[0, 0, 1] > 0.05  # F1 uses x and colour
    # a passed generator is advanced, a seed reproduces
    again = interpret.variable_importance(idata, X, kind="permutation", n_repeats=3, rng=11)
    np.testing.assert_array_equal(again.values, imp.values)


def test_thinning_keeps_evenly_spaced_draws_per_chain():
    idata, _ = _idata([[F1, F2, F1, F2, F3], [F2, F2, F1, F1, F3]])
    imp = interpret.variable_importance(idata, max_draws=4)
    np.testing.assert_array_equal(imp["draw"].values, [0, 4])
    np.testing.assert_allclose(imp.values[1, 0], [2 / 3, 1 / 3, 0])
    assert interpret.variable_importance(idata, max_draws=None).sizes["draw"] == 5
    assert interpret.variable_importance(idata, max_draws=6).sizes["draw"] == 3


def test_refusals_name_the_bad_input():
    idata, _ = _idata()
    X = _frame(10, 6)
    with pytest.raises(ValueError, match="X is needed"):
        interpret.variable_importance(idata, kind="permutation")
    with pytest.raises(ValueError, match="kind must be"):
        interpret.variable_importance(idata, kind="gain")
    with pytest.raises(ValueError, match="'size'.*training column"):
        interpret.partial_dependence(idata, X, "size")
    with pytest.raises(ValueError, match="'purple'.*levels"):
        interpret.partial_dependence(idata, X, "colour", grid=["red", "purple"])
    with pytest.raises(ValueError, match="same column twice"):
        interpret.partial_dependence(idata, X, ["x", "x"])
    with pytest.raises(ValueError, match="No forests stored for 'g'"):
        interpret.partial_dependence(idata, X, "x", var_name="g")
    with pytest.raises(ValueError, match="max_draws"):
        interpret.partial_dependence(idata, X, "x", max_draws=0)
    with pytest.raises(TypeError, match="DataTree"):
        interpret.variable_importance({"a": 1})


def test_plots_draw_hand_built_results():
    idata, _ = _idata()
    X = _frame(12, 7)
    ax = interpret.plot_variable_importance(interpret.variable_importance(idata))
    assert [t.get_text() for t in ax.get_yticklabels()][-1] in ("x", "colour")
    res = interpret.partial_dependence(idata, X, "colour", kind="both")
    ax = interpret.plot_partial_dependence(res)
    assert [t.get_text() for t in ax.get_xticklabels()] == list(LEVELS)
    fig, ax = plt.subplots()
    assert interpret.plot_partial_dependence(
        interpret.partial_dependence(idata, X, ["x", "colour"]), ax=ax) is ax
    assert ax.collections  # the heat map
    plt.close("all")


def test_importance_plot_draws_an_interval_that_excludes_the_mean():
    """A column that most draws never split on (as under DART): 96% of the draws give it
    share 0, so its 94% HDI is [0, 0] and its mean 0.04 lies outside.  The plot draws the
    mean as a point and the HDI as its own segment (error bars raised here: "xerr must not
    contain negative values")."""
    import arviz as az
    import xarray as xr

    rng = np.random.default_rng(5)
    rare = np.where(rng.uniform(size=(2, 50)) < 0.04, 1.0, 0.0)
    rare[0, 0] = 1.0
    other = rng.uniform(0.3, 0.7, size=(2, 50))
    da = xr.DataArray(np.stack([rare, other], -1), dims=("chain", "draw", "column"),
                      coords={"column": ["rare", "other"]}, attrs={"kind": "inclusion"})
    h = az.hdi(da, prob=0.94, dim=["chain", "draw"])
    mean = da.mean(("chain", "draw"))
    assert float(mean.sel(column="rare")) > float(h.sel(column="rare", ci_bound="upper"))
    ax = interpret.plot_variable_importance(da)
    segs = np.concatenate([c.get_segments() for c in ax.collections])
    # rows sorted by mean importance: "rare" at y = 0, "other" at y = 1
    got = {round(float(sg[0, 1])): (sg[0, 0], sg[1, 0]) for sg in segs}
    for y, col in enumerate(["rare", "other"]):
        np.testing.assert_allclose(got[y], h.sel(column=col).values)
    pts = ax.lines[0].get_xdata()
    np.testing.assert_allclose(pts, mean.values[[0, 1]])
    plt.close("all")


# --- a real fit -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fitted():
    import pymc as pm

    rng = np.random.default_rng(0)
    n = 80
    df = pd.DataFrame({"a": rng.uniform(size=n), "b": rng.uniform(size=n),
                       "shop": pd.Categorical(rng.choice(["n", "s", "e"], n))})
    y = (3 * df["a"] + np.where(df["shop"] == "n", 1.0, 0.0) + 0.2 * rng.normal(size=n)
         ).to_numpy()
    with pm.Model():
        f = pmt.BARTTree("f", df, y, m=10)
        pm.Normal("y", mu=f, sigma=0.2, observed=y)
        idata = pm.sample(draws=30, tune=30, chains=2, cores=1, random_seed=1,
                          progressbar=False, compute_convergence_checks=False)
    return idata, df


def test_real_fit_end_to_end(fitted):
    idata, df = fitted
    assert pmt.partial_dependence is interpret.partial_dependence  # exported at the top
    assert pmt.variable_importance is interpret.variable_importance
    inc = interpret.variable_importance(idata, var_name="f", max_draws=20)
    assert inc.dims == ("chain", "draw", "column") and inc.shape == (2, 10, 3)
    assert list(inc["column"].values) == ["a", "b", "shop"]
    np.testing.assert_allclose(inc.sum("column").values, 1.0)
    perm = interpret.variable_importance(idata, df, kind="permutation", n_repeats=2,
                                         rng=np.random.default_rng(3), max_draws=20)
    assert perm.shape == (2, 10, 3)
    assert float(perm.sel(column="a").mean()) > float(perm.sel(column="b").mean())
    pd_a = interpret.partial_dependence(idata, df, "a", kind="both", max_draws=20,
                                        grid_resolution=8)
    assert pd_a["average"].dims == ("chain", "draw", "a")
    assert pd_a["individual"].shape == (2, 10, 80, 8)
    # the posterior mean curve rises with a (the truth has slope 3)
    curve = pd_a["average"].mean(("chain", "draw")).values
    assert curve[-1] - curve[0] > 1.0
    pd_shop = interpret.partial_dependence(idata, df, "shop", max_draws=20)
    assert list(pd_shop["shop"].values) == ["e", "n", "s"]
    pd_2 = interpret.partial_dependence(idata, df, ("a", "shop"), grid_resolution=5,
                                        max_draws=20)
    assert pd_2["average"].dims == ("chain", "draw", "a", "shop")
    import arviz as az

    assert az.hdi(pd_a["average"], dim=["chain", "draw"]).dims == ("a", "ci_bound")
    fig, axes = plt.subplots(1, 5)
    for ax, res in zip(axes[:3], (pd_a, pd_shop, pd_2)):
        assert interpret.plot_partial_dependence(res, ax=ax) is ax
    interpret.plot_variable_importance(inc, ax=axes[3])
    interpret.plot_variable_importance(perm, ax=axes[4], hdi_prob=0.8)
    assert axes[0].collections  # the HDI band
    plt.close(fig)


# --- boosting ---------------------------------------------------------------------------------


def _boost_data(n, seed):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"u": rng.uniform(size=n), "v": rng.normal(size=n),
                      "w": pd.Categorical(rng.choice(["p", "q", "r", "s", "t"], n))})
    signal = np.sin(4 * X["u"]) + X["v"] + (X["w"].isin(["p", "q"])).astype(float)
    return X, signal.to_numpy() + 0.1 * rng.normal(size=n)


def test_boosting_partial_dependence_equals_sklearn_brute():
    from sklearn.inspection import partial_dependence as sk_pd

    from pymc_trees.boosting import BoostedTreesClassifier, BoostedTreesRegressor

    X, y = _boost_data(150, 8)
    reg = BoostedTreesRegressor(n_estimators=20, max_depth=3, random_state=0).fit(X, y)
    res = interpret.partial_dependence(reg, X, "u", kind="both", grid_resolution=9)
    assert res["average"].dims == ("u",) and res["individual"].dims == ("obs", "u")
    assert res.attrs["source"] == "boosting"
    sk = sk_pd(reg, X, ["u"], method="brute", kind="both",
               custom_values={"u": res["u"].values})
    np.testing.assert_allclose(res["average"].values, sk["average"][0], rtol=1e-12)
    np.testing.assert_allclose(res["individual"].values, sk["individual"][0], rtol=1e-12)
    # 2-D with a categorical column
    res2 = interpret.partial_dependence(reg, X, ["v", "w"], grid_resolution=4)
    sk2 = sk_pd(reg, X, ["v", "w"], method="brute", categorical_features=["w"],
                custom_values={"v": res2["v"].values, "w": res2["w"].values})
    np.testing.assert_allclose(res2["average"].values, sk2["average"][0], rtol=1e-12)
    # classifiers: the probability of classes_[1], every class for more than two
    yc = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    for labels in (yc > 0, yc):
        clf = BoostedTreesClassifier(n_estimators=10, max_depth=3, random_state=0).fit(
            X, labels)
        res = interpret.partial_dependence(clf, X, "w")
        sk = sk_pd(clf, X, ["w"], method="brute", categorical_features=["w"],
                   custom_values={"w": res["w"].values})
        want = sk["average"] if clf.classes_.size > 2 else sk["average"][0]
        np.testing.assert_allclose(res["average"].values, want, rtol=1e-12)
        assert ("output" in res["average"].dims) == (clf.classes_.size > 2)
    plt.close(interpret.plot_partial_dependence(res).figure)


def test_boosting_importances():
    from pymc_trees.boosting import BoostedTreesRegressor

    X, y = _boost_data(120, 9)
    X = X.assign(noise=0.0)  # a constant column: never split on
    reg = BoostedTreesRegressor(n_estimators=15, max_depth=3, random_state=0).fit(X, y)
    inc = interpret.variable_importance(reg)
    assert inc.dims == ("column",)
    weight = reg.get_score("weight")
    total = sum(weight.values())
    np.testing.assert_allclose(inc.values, [weight.get(c, 0.0) / total for c in X.columns])
    perm = interpret.variable_importance(reg, X, kind="permutation", n_repeats=2, rng=0)
    assert perm.dims == ("column",) and perm.sel(column="noise").item() == 0.0
    # the formula against the estimator's own predictions
    rng = np.random.default_rng(0)
    f = reg.predict(X)
    want = np.zeros(4)
    for _ in range(2):
        for j, col in enumerate(X.columns):
            Xp = X.copy()
            Xp[col] = X[col].to_numpy()[rng.permutation(len(X))]
            want[j] += np.mean((f - reg.predict(Xp)) ** 2) / f.var() / 2
    np.testing.assert_allclose(perm.values, want, rtol=1e-12)
    plt.close(interpret.plot_variable_importance(perm).figure)


def test_batches_of_grid_points_and_permutations_give_the_same_numbers(monkeypatch):
    idata, _ = _idata()
    X = _frame(16, 10)
    whole = interpret.partial_dependence(idata, X, ["x", "colour"], kind="both")
    perm = interpret.variable_importance(idata, X, kind="permutation", n_repeats=3, rng=2)
    monkeypatch.setattr(sources, "BATCH_FLOATS", 1)  # one grid point / permutation a call
    xr.testing.assert_identical(
        interpret.partial_dependence(idata, X, ["x", "colour"], kind="both"), whole)
    xr.testing.assert_identical(
        interpret.variable_importance(idata, X, kind="permutation", n_repeats=3, rng=2), perm)


def test_pm_data_without_names_takes_a_dataframe_by_position():
    """``pm.Data("X", df)`` keeps no column names (PyMC stores an array), so the term's
    columns are positional.  Interpretation and prediction then read a DataFrame in the
    training order and label the results with its names (issue 27): partial dependence by
    name, importance labelled by name, and predictions equal to the array's.  A frame whose
    labels are the positions in another order is refused; so is a frame with too many
    columns."""
    import pymc as pm

    rng = np.random.default_rng(31)
    n = 120
    df = pd.DataFrame({"bmi": rng.uniform(size=n), "age": rng.uniform(size=n),
                       "noise": rng.uniform(size=n)})
    y = 3.0 * df["bmi"].to_numpy() + rng.normal(0, 0.2, n)
    with pm.Model():
        X = pm.Data("X", df)
        f = pmt.BARTTree("f", X, y, m=10)
        pm.Normal("y", f, 0.2, observed=y)
        idata = pm.sample(draws=40, tune=40, chains=1, random_seed=32, progressbar=False,
                          compute_convergence_checks=False)
    assert idata["forests"]["f_column"].attrs["named"] == 0
    pd_bmi = pmt.partial_dependence(idata, df, "bmi", grid_resolution=6)
    assert pd_bmi["average"].dims == ("chain", "draw", "bmi")
    by_index = pmt.partial_dependence(idata, df.to_numpy(), 0, grid_resolution=6)
    np.testing.assert_allclose(pd_bmi["average"].values, by_index["average"].values)
    curve = pd_bmi["average"].mean(("chain", "draw")).values
    assert curve[-1] - curve[0] > 1.0  # the truth rises by 3 over bmi's range
    inc = pmt.variable_importance(idata, df)
    assert list(inc["column"].values) == ["bmi", "age", "noise"]
    assert list(pmt.variable_importance(idata)["column"].values) == ["0", "1", "2"]
    perm = pmt.variable_importance(idata, df, kind="permutation", rng=1, n_repeats=1)
    assert list(perm["column"].values) == ["bmi", "age", "noise"]
    assert float(perm.sel(column="bmi").mean()) > float(perm.sel(column="noise").mean())
    np.testing.assert_array_equal(pmt.predict(idata, df, var_name="f").values,
                                  pmt.predict(idata, df.to_numpy(), var_name="f").values)
    shuffled = pd.DataFrame(df.to_numpy()[:, [1, 0, 2]], columns=[1, 0, 2])
    with pytest.raises(ValueError, match="positions in another order"):
        pmt.predict(idata, shuffled, var_name="f")
    with pytest.raises(ValueError, match="has 4 columns; the training data had 3"):
        pmt.partial_dependence(idata, df.assign(extra=1.0), "bmi")


def test_convergence_plot_is_the_ecdf_of_every_rows_diagnostics(fitted):
    """pymc-bart's plot_convergence: per row of f the bulk and tail ESS and the R-hat, drawn
    as empirical CDFs (each curve's x values are the sorted diagnostics of ArviZ), with the
    threshold lines; the same from the forests at X when the posterior has no values of f;
    axes returned, ``ax=`` honoured, and the refusals."""
    import arviz as az

    idata, df = fitted
    f = idata.posterior["f"]
    axes = pmt.plot_convergence(idata, "f", figsize=(8, 3))
    assert axes.shape == (2,) and axes[0].figure.get_size_inches().tolist() == [8.0, 3.0]
    want = {"bulk ESS": az.ess(f, method="bulk"), "tail ESS": az.ess(f, method="tail"),
            "R-hat": az.rhat(f)}
    curves = [ln for a in axes for ln in a.get_lines() if ln.get_label()[0] != "_"]
    assert [c.get_label().split(" (")[0] for c in curves] == list(want)
    for c, (key, v) in zip(curves, want.items()):
        v = np.sort(v.values[np.isfinite(v.values)])
        np.testing.assert_allclose(c.get_xdata(), v)
        np.testing.assert_allclose(c.get_ydata(), np.arange(1, v.size + 1) / v.size)
        line = 200.0 if "ESS" in key else 1.01  # 100 per chain, two chains
        share = np.mean(v < line) if "ESS" in key else np.mean(v > line)
        assert c.get_label().endswith(f"({share:.0%} of rows "
                                      f"{'below' if 'ESS' in key else 'above'} {line:g})")
    vlines = [ln.get_xdata()[0] for a in axes for ln in a.get_lines() if ln.get_label()[0] == "_"]
    assert vlines == [200.0, 1.01]
    # from the forests at X when the values are not in the posterior: the same curves
    fig, ax2 = plt.subplots(1, 2)
    slim = idata.copy()
    slim["posterior"] = slim["posterior"].to_dataset().drop_vars("f")
    with pytest.raises(ValueError, match="pass X"):
        pmt.plot_convergence(slim, "f")
    out = pmt.plot_convergence(slim, "f", X=df, ax=ax2, ess_threshold=50)
    assert out[0] is ax2[0] and out[1] is ax2[1]
    got = [ln for a in out for ln in a.get_lines() if ln.get_label()[0] != "_"]
    for c, g in zip(curves, got):
        np.testing.assert_allclose(g.get_xdata(), c.get_xdata(), rtol=1e-9)
    with pytest.raises(ValueError, match="ess_threshold must be a positive number"):
        pmt.plot_convergence(idata, "f", ess_threshold=0)
    with pytest.raises(ValueError, match="two Axes"):
        pmt.plot_convergence(idata, "f", ax=ax2[0])
    plt.close("all")


def test_partial_dependence_grid_panels_func_and_discrete_columns(fitted):
    """pymc-bart's plot_pdp: one panel per column; each panel's mean curve is the posterior
    mean of partial_dependence's; with ``func`` it is the mean over draws and rows of
    func(ICE values), not func of the average; ``var_discrete`` evaluates a numeric column at
    its distinct values; one y range with ``sharey``; axes returned and ``ax=`` honoured."""
    idata, df = fitted
    axes = pmt.plot_partial_dependence_grid(idata, df, figsize=(9, 3), max_draws=20)
    assert axes.shape == (3,)
    want = pmt.partial_dependence(idata, df, "a", max_draws=20)["average"]
    mean_line = [ln for ln in axes[0].get_lines() if ln.get_xdata().size == want["a"].size]
    np.testing.assert_allclose(mean_line[-1].get_ydata(),
                               want.mean(("chain", "draw")).values)
    assert len({a.get_ylim() for a in axes}) == 1  # sharey
    # func before averaging over rows
    fig, ax = plt.subplots(1, 2)
    out = pmt.plot_partial_dependence_grid(idata, df, ["a", "b"], func=np.exp, ax=ax,
                                           max_draws=20, sharey=False)
    assert out[0] is ax[0] and out[1] is ax[1]
    ind = pmt.partial_dependence(idata, df, "a", kind="individual", max_draws=20)
    exp_avg = np.exp(ind["individual"]).mean("obs").mean(("chain", "draw")).values
    naive = np.exp(want.mean(("chain", "draw")).values)
    assert np.max(np.abs(exp_avg - naive)) > 1e-3  # the two differ here
    got = [ln.get_ydata() for ln in ax[0].get_lines() if ln.get_xdata().size == exp_avg.size]
    np.testing.assert_allclose(got[-1], exp_avg)
    # a numeric column at its distinct values, drawn as points
    b = np.round(df["b"].to_numpy(), 1)
    df1 = df.assign(b=b)
    axd = pmt.plot_partial_dependence_grid(idata, df1, ["b"], var_discrete=["b"], max_draws=20)
    sizes = {ln.get_xdata().size for ln in axd[0].get_lines()}
    assert np.unique(b).size in sizes
    with pytest.raises(ValueError, match="must keep the shape"):
        pmt.plot_partial_dependence_grid(idata, df, ["a"], func=lambda f: f.mean(-1),
                                         max_draws=20)
    with pytest.raises(ValueError, match="ax has 1 Axes for 2 columns"):
        pmt.plot_partial_dependence_grid(idata, df, ["a", "b"], ax=[ax[0]], max_draws=20)
    plt.close("all")


# --- variable selection over submodels --------------------------------------------------------


def _goes_left(nd, x) -> bool:
    if np.isnan(x):
        return bool(nd["missing_left"])
    if nd["cats"] != 0:
        return bool((int(nd["cats"]) >> int(x)) & 1)
    return x <= nd["threshold"]


def _marginal_walk(forest: PackedForest, A: np.ndarray, excluded) -> np.ndarray:
    """The forest at the rows A with the columns ``excluded`` marginalised out by the rows
    of A, by recursion: counts of A's rows per node, then each row's weighted descent."""
    nodes = forest.nodes
    count = np.zeros(nodes.size)
    for row in A:
        for t in range(forest.m):
            k = int(forest.start[t])
            count[k] += 1
            while nodes[k]["feature"] >= 0:
                k = int(nodes[k]["left"]) + (0 if _goes_left(nodes[k], row[nodes[k]["feature"]])
                                             else 1)
                count[k] += 1

    def value(k, row):
        nd = nodes[k]
        if nd["feature"] < 0:
            return nd["value"]
        left = int(nd["left"])
        if nd["feature"] in excluded:
            nl, nr = count[left], count[left + 1]
            w = 0.5 if nl + nr == 0 else nl / (nl + nr)
            return w * value(left, row) + (1 - w) * value(left + 1, row)
        return value(left if _goes_left(nd, row[nd["feature"]]) else left + 1, row)

    return np.array([forest.offset + sum(value(int(forest.start[t]), row)
                                         for t in range(forest.m)) for row in A])


def _trees_of(idata):
    return sources.interpretation_source(idata, "f", None).trees


def test_marginal_prediction_equals_a_recursion_for_every_set_of_dropped_columns():
    idata, schema = _idata()
    trees = _trees_of(idata)
    A = schema.encode(_frame(40, 8))  # gaps in x and colour
    forests = [fr for row in DRAWS for fr in row]
    for mask in range(8):
        excluded = np.array([(mask >> j) & 1 for j in range(3)], bool)
        got = trees.predict(A, excluded=excluded)
        for r, fr in enumerate(forests):
            want = _marginal_walk(fr, A, set(np.flatnonzero(excluded)))
            np.testing.assert_allclose(got[r], want, rtol=1e-13, atol=1e-13)
        if mask == 0:
            np.testing.assert_array_equal(got, trees.predict(A))
        if mask == 7:  # everything dropped: each draw's mean over the rows of A
            np.testing.assert_allclose(got, trees.predict(A).mean(axis=1, keepdims=True)
                                       * np.ones_like(got), rtol=1e-13)


def test_marginal_prediction_is_partial_dependence_on_a_full_factorial_table():
    # when the rows are every combination of the columns' values, weighting by shares of
    # rows is averaging over the dropped column's values (the interventional mean)
    idata, schema = _idata()
    trees = _trees_of(idata)
    xs, codes, zs = [0.1, 0.25, 0.6, 0.8, np.nan], [0.0, 1.0, 2.0, np.nan], [-1.0, 2.0]
    A = np.array([[x, c, z] for x in xs for c in codes for z in zs])
    for j, values in ((0, xs), (1, codes)):
        excluded = np.zeros(3, bool)
        excluded[j] = True
        got = trees.predict(A, excluded=excluded)
        want = np.zeros_like(got)
        for v in values:
            Av = A.copy()
            Av[:, j] = v
            want += trees.predict(Av) / len(values)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _brute_backward(trees, A, S, p, K=1):
    """Backward elimination with every submodel evaluated from scratch."""
    from pymc_trees.interpret.selection import _r2

    full = trees.predict(A).reshape(S, K, -1)
    excluded, dropped, steps = np.zeros(p, bool), [], {}
    for keep in range(p - 1, 0, -1):
        scores = {}
        for j in np.flatnonzero(~excluded):
            e = excluded.copy()
            e[j] = True
            r = _r2(full, trees.predict(A, excluded=e).reshape(S, K, -1))
            scores[j] = (np.nanmean(r), r)
        j = max(scores, key=lambda k: scores[k][0])  # first of equals, as the code
        excluded[j] = True
        dropped.append(j)
        steps[keep] = scores[j][1]
    return [int(np.flatnonzero(~excluded)[0])] + dropped[::-1], steps


# F1 and a tree on z: every column is read, so that each backward step drops one
F4 = _forest(*TREES1[:2], _tree((2, 1, 0.0, 0, 1, 0), _leaf(0.7), _leaf(-0.4)))
DRAWS4 = [[F4, F2, F1], [F2, F3, F4]]


def test_backward_elimination_equals_brute_force_and_the_reference_pairs_draws():
    idata, schema = _idata(DRAWS4)
    X = _frame(40, 9)
    A = schema.encode(X)
    res = pmt.select_variables(idata, X, max_draws=None)
    assert res["r2"].dims == ("chain", "draw", "n_columns")
    trees = _trees_of(idata)
    ranking, steps = _brute_backward(trees, A, 6, 3)
    assert list(res["column"].values) == [schema.names[j] for j in ranking]
    for keep, r in steps.items():
        np.testing.assert_allclose(res["r2"].sel(n_columns=keep).values.ravel(), r.ravel(),
                                   rtol=1e-10)
    # the full model explains itself, except a forest of stumps (F3: constant)
    r_full = res["r2"].sel(n_columns=3).values.ravel()
    assert np.isnan(r_full[4]) and np.allclose(np.delete(r_full, 4), 1.0)
    # the reference: draw s against draw s + 3 of the 6 (the same draw of the other chain)
    f = trees.predict(A)
    ref = res["reference"].values.ravel()
    for s in range(6):
        o = (s + 3) % 6
        if s == 4:  # a constant draw is explained by nothing: NaN, and explains nothing
            assert np.isnan(ref[s]) and ref[o] == 0.0
        elif o != 4:
            np.testing.assert_allclose(ref[s], np.corrcoef(f[s], f[o])[0, 1] ** 2,
                                       rtol=1e-12)
    mean_r2 = res["r2"].mean(("chain", "draw"), skipna=True).values
    k = res.attrs["recommended"]
    assert mean_r2[k - 1] >= res.attrs["reference_r2"]
    assert k == 1 or mean_r2[k - 2] < res.attrs["reference_r2"]
    np.testing.assert_allclose(res["full_mean"].values, f.mean(axis=0))


def test_selection_of_a_two_output_term_compares_means_over_outputs():
    both = _forest(*TREES1, *TREES2)
    other = _forest(*TREES2, *TREES1)
    idata, schema = _idata([[both, other]], outputs=2)
    X = _frame(30, 4)
    res = pmt.select_variables(idata, X)
    assert res["r2"].dims == ("chain", "draw", "output", "n_columns")
    assert res["submodel_mean"].dims == ("output", "n_columns", "obs")
    # each step drops the column whose removal keeps the largest mean over draws and
    # outputs; first z, which no tree reads
    ranking, steps = _brute_backward(_trees_of(idata), schema.encode(X), 2, 3, K=2)
    assert list(res["column"].values) == [schema.names[j] for j in ranking]
    assert res["column"].values[-1] == "z"
    np.testing.assert_allclose(res["r2"].sel(n_columns=2).values, 1.0)
    np.testing.assert_allclose(res["r2"].sel(n_columns=1).values.reshape(2, 2),
                               steps[1].reshape(2, 2), rtol=1e-10)
    fig, ax = plt.subplots()
    pmt.plot_submodels(res, ax=ax)
    pmt.plot_scatter_submodels(res, submodels=[1])
    plt.close("all")


def test_selection_by_inclusion_keeps_the_columns_split_on_most(fitted):
    idata, df = fitted
    res = pmt.select_variables(idata, df, method="inclusion", max_draws=20)
    inc = pmt.variable_importance(idata, max_draws=20).mean(("chain", "draw"))
    order = list(inc["column"].values[np.argsort(-inc.values, kind="stable")])
    assert list(res["column"].values) == order
    src = sources.interpretation_source(idata, "f", 20)
    A = src.encode(df)
    from pymc_trees.interpret.selection import _r2

    full = src.trees.predict(A)
    for keep in (1, 2):
        excluded = ~np.isin(np.array(src.schema().names), order[:keep])
        sub = src.trees.predict(A, excluded=excluded)
        np.testing.assert_allclose(res["r2"].sel(n_columns=keep).values.ravel(),
                                   _r2(full, sub).ravel(), rtol=1e-10)


def test_backward_selection_of_a_real_fit_keeps_the_signal(fitted):
    # y = 3 a + 1{shop = n} + noise: b is noise
    idata, df = fitted
    res = pmt.select_variables(idata, df, max_draws=40)
    assert set(res["column"].values[:2]) == {"a", "shop"}
    assert res.attrs["recommended"] <= 2
    r2 = res["r2"].mean(("chain", "draw")).values
    assert r2[1] > 0.95 and r2[0] < r2[1]
    fig, ax = plt.subplots()
    assert pmt.plot_submodels(res, ax=ax) is ax
    assert len(ax.get_xticklabels()) == 3 and ax.get_xticklabels()[1].get_text().startswith("+ ")
    axes = pmt.plot_scatter_submodels(res, figsize=(6, 3))
    assert len(axes) == 2 and tuple(axes[0].figure.get_size_inches()) == (6, 3)
    xs, ys = axes[1].lines[0].get_data()
    np.testing.assert_allclose(xs, res["full_mean"].values)
    np.testing.assert_allclose(ys, res["submodel_mean"].sel(n_columns=2).values)
    with pytest.raises(ValueError, match="submodels must be numbers of columns from 1 to 3"):
        pmt.plot_scatter_submodels(res, submodels=[0])
    with pytest.raises(ValueError, match="method must be one of"):
        pmt.select_variables(idata, df, method="VI")
    with pytest.raises(TypeError, match="select_variables"):
        pmt.plot_submodels(res["r2"])
    plt.close("all")


def test_selection_refuses_a_boosting_model():
    from pymc_trees.boosting import BoostedTreesRegressor

    X = _frame(60, 2)
    est = BoostedTreesRegressor(n_estimators=3).fit(X[["x", "z"]], np.arange(60.0))
    with pytest.raises(TypeError, match="kind='permutation'"):
        pmt.select_variables(est, X[["x", "z"]])
