"""Answers that were silently wrong, crashes and a hang, found by trying the package as a
careful new user (issue "No silent wrong answers"): each test fails on the code before the
fix, and the silent ones compare with the right answer, not only with "no error".

* selections of draws (thinned, one chain, stacked) keep the trace's own labels everywhere;
* column names through ``pm.Data`` (given with ``columns=``, or a DataFrame refused where it
  would be read by position), integer column labels, ``missing=`` with DataFrames;
* Y is checked against X; the general tree step rejects proposals outside a parameter's
  support and refuses a start of zero density with the rows; the categorical split draw is
  exact and bounded; clearer errors for indexed terms, 1-D X and ``noise_prior`` with gaps.

(The posterior predictive refusal whatever the warnings filters say is in
``test_pymc_api.py::test_plain_pymc_call_refuses_at_new_data``.)
"""

from __future__ import annotations

import itertools
import re
import time

import numpy as np
import pandas as pd
import pymc as pm
import pytest
from scipy import stats

import pymc_trees as pmt
from pymc_trees.bart.kernels.nodes import REJECTION_MIN_ACCEPT, draw_level_set

SAMPLE = dict(tune=30, draws=24, chains=2, random_seed=5, progressbar=False,
              compute_convergence_checks=False)


def _frame(n=80, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.uniform(size=n), "b": rng.uniform(size=n),
                       "c": rng.uniform(size=n)})
    y = 3 * df["a"].to_numpy() - 2 * df["c"].to_numpy() + 0.1 * rng.normal(size=n)
    return df, y


@pytest.fixture(scope="module")
def fitted():
    """A term on a pm.Data of a DataFrame (PyMC keeps no column names), 2 chains."""
    df, y = _frame()
    with pm.Model() as model:
        Xd = pm.Data("X", df)
        f = pmt.BARTTree("f", Xd, Y=y, m=8)
        pm.Normal("y", mu=f, sigma=0.2, observed=y, shape=Xd.shape[0])
        idata = pm.sample(**SAMPLE)
    return model, idata, df, y


# -- 1. selections of draws ---------------------------------------------------------------

def test_thinned_trace_keeps_draw_labels_and_pairs_with_the_posterior(fitted):
    _, idata, df, _ = fitted
    X = df.to_numpy()
    sub = idata.sel(draw=slice(0, None, 4))
    pred = pmt.predict(sub, X)
    np.testing.assert_array_equal(pred["draw"].values, sub.posterior["draw"].values)
    np.testing.assert_array_equal(pred["draw"].values, np.arange(0, 24, 4))
    # arithmetic with the posterior pairs every draw with its own values: difference 0
    diff = pred - sub.posterior["f"]  # predict takes the posterior's row dim at training X
    assert diff.sizes["draw"] == 6 and float(abs(diff).max()) == 0.0
    # the forests group keeps the labels itself (saved and reloaded traces too)
    assert list(idata["forests"]["draw"].values) == list(range(24))


def test_one_chain_and_stacked_draws(fitted):
    _, idata, df, _ = fitted
    X = df.to_numpy()
    full = pmt.predict(idata, X)
    one = pmt.predict(idata.sel(chain=1), X)  # the chain dim dropped, as in the selection
    assert one.dims == ("draw", "f_dim_0") and int(one["chain"]) == 1
    np.testing.assert_array_equal(one.values, full.sel(chain=1).values)
    kept = pmt.predict(idata.isel(chain=[1], draw=[3, 7]), X)
    assert kept.dims == ("chain", "draw", "f_dim_0")
    np.testing.assert_array_equal(kept["draw"].values, [3, 7])
    np.testing.assert_array_equal(kept.values[0], full.sel(chain=1, draw=[3, 7]).values)
    # a posterior Dataset (az.extract, idata.posterior) has no forests: refused with the way
    with pytest.raises(TypeError, match=r"no forests.*idata.sel"):
        pmt.predict(idata.posterior.to_dataset(), X)


def test_thinned_importance_and_posterior_predictive(fitted):
    model, idata, df, _ = fitted
    X = df.to_numpy()
    sub = idata.sel(draw=slice(1, None, 5))
    imp = pmt.variable_importance(sub, max_draws=None)
    np.testing.assert_array_equal(imp["draw"].values, [1, 6, 11, 16, 21])
    np.testing.assert_array_equal(imp.values,
                                  pmt.variable_importance(idata, max_draws=None)
                                  .sel(draw=[1, 6, 11, 16, 21]).values)
    with model:
        pred = pmt.sample_posterior_predictive(sub, var_names=["f"], progressbar=False,
                                               random_seed=1)
    got = pred.posterior_predictive["f"]
    np.testing.assert_array_equal(got["draw"].values, [1, 6, 11, 16, 21])
    np.testing.assert_array_equal(got.values, sub.posterior["f"].values)
    np.testing.assert_array_equal(got.values, pmt.predict(sub, X).values)


def test_forests_group_written_without_labels_takes_the_posteriors(fitted):
    """Traces saved before the forests kept their labels: after thinning the whole DataTree
    the forests are paired with the posterior's labels."""
    _, idata, df, _ = fitted
    old = idata.copy()
    old["forests"] = old["forests"].to_dataset().drop_vars(["chain", "draw"])
    sub = old.sel(draw=slice(0, None, 4))
    pred = pmt.predict(sub, df.to_numpy())
    np.testing.assert_array_equal(pred["draw"].values, np.arange(0, 24, 4))
    np.testing.assert_array_equal(pred.values, sub.posterior["f"].values)


# -- 2. and 10. names through pm.Data, integer labels, messages -----------------------------

def test_a_frame_is_read_by_position_for_a_term_without_names(fitted):
    """The term was fit on an array (no names): a DataFrame is read by position, whatever
    its names (issue 27: pm.Data("X", df) keeps none), and interpretation is labelled with
    them; labels that are the positions out of order are refused."""
    _, idata, df, _ = fitted
    reordered = df[["c", "a", "b"]]
    np.testing.assert_array_equal(pmt.predict(idata, reordered).values,
                                  pmt.predict(idata, reordered.to_numpy()).values)
    pd_c = pmt.partial_dependence(idata, reordered, "c", max_draws=4)
    np.testing.assert_array_equal(
        pd_c["average"].values,
        pmt.partial_dependence(idata, reordered.to_numpy(), 0, max_draws=4)["average"].values)
    # labels that are the positions are read by position; out of order they are refused
    base = pmt.predict(idata, df.to_numpy())
    np.testing.assert_array_equal(pmt.predict(idata, pd.DataFrame(df.to_numpy())).values,
                                  base.values)
    with pytest.raises(ValueError, match=r"positions in another order.*sort_index"):
        pmt.predict(idata, pd.DataFrame(df.to_numpy())[[2, 0, 1]])


def test_columns_given_to_a_pm_data_term_match_by_name():
    df, y = _frame(seed=1)
    with pm.Model():
        Xd = pm.Data("X", df)
        f = pmt.BARTTree("f", Xd, Y=y, m=6, columns=df.columns)
        pm.Normal("y", mu=f, sigma=0.2, observed=y, shape=Xd.shape[0])
        idata = pm.sample(**{**SAMPLE, "chains": 1})
    np.testing.assert_array_equal(pmt.predict(idata, df[["c", "a", "b"]]).values,
                                  idata.posterior["f"].values)
    pd_a = pmt.partial_dependence(idata, df[["b", "c", "a"]], "a", max_draws=4)
    pd_ref = pmt.partial_dependence(idata, df, "a", max_draws=4)
    np.testing.assert_array_equal(pd_a["average"].values, pd_ref["average"].values)
    imp = pmt.variable_importance(idata)
    assert list(imp["column"].values) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="columns names 2 columns"):
        with pm.Model():
            pmt.BARTTree("g", df.to_numpy(), Y=y, columns=["a", "b"])
    with pytest.raises(ValueError, match="drop columns="):
        with pm.Model():
            pmt.BARTTree("g", df, Y=y, columns=["x", "y", "z"])


def test_integer_column_labels_are_names():
    df, y = _frame(seed=2)
    dfi = pd.DataFrame(df.to_numpy())  # labels 0, 1, 2
    with pm.Model():
        f = pmt.BARTTree("f", dfi, Y=y, m=6)
        pm.Normal("y", mu=f, sigma=0.2, observed=y)
        idata = pm.sample(**{**SAMPLE, "chains": 1})
    np.testing.assert_array_equal(pmt.predict(idata, dfi[[2, 0, 1]]).values,
                                  idata.posterior["f"].values)


def test_missing_column_message_lists_only_what_is_there():
    df, y = _frame(seed=3)
    schema, _ = pmt.TableSchema.from_training(df)
    with pytest.raises(ValueError) as err:
        schema.encode(df.rename(columns={"c": "z"}))
    assert "missing 'c', unknown 'z'" in str(err.value)
    with pytest.raises(ValueError) as err:
        schema.encode(df.assign(z=1.0))
    assert "unknown 'z'" in str(err.value) and "missing" not in str(err.value)
    assert ", ," not in str(err.value) and "missing ," not in str(err.value)


# -- 4. missing= with DataFrames ------------------------------------------------------------

def test_missing_marker_applies_to_data_frames_at_predict():
    df, y = _frame(seed=4)
    df.loc[df.index[:15], "a"] = -999.0
    with pm.Model():
        f = pmt.BARTTree("f", df, Y=y, m=8, missing=-999.0)
        pm.Normal("y", mu=f, sigma=0.2, observed=y)
        idata = pm.sample(**{**SAMPLE, "chains": 1})
    as_frame = pmt.predict(idata, df).values
    np.testing.assert_array_equal(as_frame, idata.posterior["f"].values)
    np.testing.assert_array_equal(as_frame, pmt.predict(idata, df.to_numpy()).values)
    np.testing.assert_array_equal(
        as_frame, pmt.predict(idata, df.replace(-999.0, np.nan)).values)


# -- 7. Y checked against X -----------------------------------------------------------------

@pytest.mark.parametrize("bad", ["short", "two_columns"])
def test_Y_must_be_one_value_per_row(bad):
    df, y = _frame(seed=5)
    Y = y[:50] if bad == "short" else np.column_stack([y, y])
    with pytest.raises(ValueError, match=r"one response value per row of X.*data scale"):
        with pm.Model():
            pmt.BARTTree("f", df, Y=Y)


def test_link_message_says_Y_stays_on_the_data_scale():
    rng = np.random.default_rng(6)
    X = rng.uniform(size=(60, 2))
    y = rng.poisson(np.exp(1 + X[:, 0]))
    with pm.Model():
        f = pmt.BARTTree("f", X, Y=y, m=5)  # identity link by default
        pm.Poisson("y", mu=pm.math.exp(f), observed=y)
        with pytest.raises(pmt.ModelStructureError,
                           match=r"link='log'.*data scale.*not transformed"):
            pm.sample(**{**SAMPLE, "chains": 1})


# -- 8. the general step at invalid parameter values ----------------------------------------

def _count_data(n=80, seed=7):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 2))
    return X, rng.poisson(np.exp(1.5 + X[:, 0])), rng.normal(0, 0.2 + X[:, 0])


def test_general_step_rejects_proposals_outside_the_support():
    """Poisson(mu=f) with f's prior wide enough to propose negative rates: sampled, never
    raises, and every kept value of f is a valid rate."""
    X, y, _ = _count_data()
    with pm.Model():
        f = pmt.BARTTree("f", X, m=5, leaf_sd=2.0)
        pm.Poisson("y", mu=f + y.mean(), observed=y)
        idata = pm.sample(**{**SAMPLE, "chains": 1})
    rate = idata.posterior["f"].values + y.mean()
    assert rate.min() > 0
    assert abs(float(rate.mean()) - y.mean()) < 1.0


@pytest.mark.slow
def test_heteroscedastic_scale_term_samples_and_zero_density_start_is_refused():
    X, _, yn = _count_data()
    yp = yn + 3.0  # a response whose calibration puts the offset inside sigma's support
    with pm.Model():
        w = pmt.BARTTree("w", X, Y=yp, m=5, shape=(2, X.shape[0]))
        pm.Normal("y", w[0], pm.math.abs(w[1]), observed=yp)
        idata = pm.sample(**{**SAMPLE, "chains": 1})
    assert np.all(np.isfinite(idata.posterior["w"].values))
    with pm.Model():
        w = pmt.BARTTree("w", X, m=5, leaf_sd=0.5, shape=(2, X.shape[0]))
        pm.Normal("y", w[0], pm.math.abs(w[1]), observed=yn)
        with pytest.raises(ValueError, match=r"'y' has zero density at the starting point of "
                                             r"'w' at 80 of 80 rows \(\[0, 1, 2"):
            pm.sample(**{**SAMPLE, "chains": 1})


# -- 9. the categorical split draw ----------------------------------------------------------

def _valid_sets(counts, min_leaf):
    levels = [b for b in range(len(counts)) if counts[b] > 0]
    tot = sum(counts)
    out = []
    for r in range(len(levels) + 1):
        for c in itertools.combinations(levels, r):
            if min_leaf <= sum(counts[b] for b in c) <= tot - min_leaf:
                out.append(sum(1 << b for b in c))
    return out


@pytest.mark.parametrize("counts,min_leaf", [
    ([6, 1, 1, 1, 1, 1, 1], 6),     # one big level and k single rows, min_leaf = k: 2 sets
    ([1] * 10, 5),                  # 252 of 1,024 coin proposals valid: the exact draw
    ([2, 1, 1, 1, 3, 1], 4),        # 22 of 64: fair coins
    ([1, 2, 0, 3, 1, 1], 3),        # 16 of 32: fair coins (a level absent from the node)
    ([5, 5, 5], 2),
])
def test_level_sets_are_uniform_on_the_valid_ones(counts, min_leaf):
    """Chi-square against the uniform distribution on the sets that leave min_leaf rows on
    each side (enumerated); the draws are independent, so N = 20,000 is the effective size
    and p > 0.001 is the criterion (a sampler off by 10% on one set of 22 fails it)."""
    counts = np.asarray(counts, np.int64)
    P = sum(1 << b for b in range(counts.size) if counts[b] > 0)
    valid = _valid_sets(counts.tolist(), min_leaf)
    rng = np.random.default_rng(17)
    N = 20_000
    draws = np.array([draw_level_set(rng, counts, P, min_leaf) for _ in range(N)])
    assert set(np.unique(draws)) <= set(valid)
    observed = np.array([(draws == s).sum() for s in valid])
    if len(valid) > 1:
        assert stats.chisquare(observed).pvalue > 1e-3
    frac = len(valid) / 2 ** int((counts > 0).sum())
    exact = counts.tolist() in ([6, 1, 1, 1, 1, 1, 1], [1] * 10)
    assert (frac < REJECTION_MIN_ACCEPT) == exact


def test_no_hang_when_almost_no_level_set_is_valid():
    """One level of k rows and k single-row levels with min_leaf = k: 2 valid sets among
    2^31 (the rejection loop took 9.5 s at k = 24 and did not finish at k = 30)."""
    k = 30
    codes = np.concatenate([np.zeros(k), np.arange(1, k + 1)]).astype(float)
    X = np.column_stack([codes, np.random.default_rng(0).uniform(size=2 * k)])
    start = time.perf_counter()
    with pm.Model():
        f = pmt.BARTTree("f", X, m=20, leaf_sd=1.0, min_leaf=k, categorical=[0])
        draws = pm.draw(f, draws=20, random_seed=1)
    assert draws.shape == (20, 2 * k)
    assert time.perf_counter() - start < 60  # numba compilation included; was unbounded


# -- 10. clearer errors ---------------------------------------------------------------------

@pytest.mark.parametrize("form", ["index", "slice"])
def test_indexed_term_has_a_clear_error(form):
    X, _, yn = _count_data()
    idx = np.arange(0, 80, 2)
    with pm.Model():
        f = pmt.BARTTree("f", X, Y=yn, m=5)
        mu = f[idx] if form == "index" else f[:40]
        pm.Normal("y", mu=mu, sigma=0.3, observed=yn[:40])
        with pytest.raises(pmt.ModelStructureError,
                           match=r"has 40 rows, but 'f' has one value per row of X \(80\).*"
                                 r"Indexing or slicing"):
            pm.sample(**{**SAMPLE, "chains": 1})


@pytest.mark.parametrize("shape", [(30,), (30, 2, 1)])
def test_pm_data_of_the_wrong_rank_is_refused_with_the_reason(shape):
    with pm.Model():
        Xd = pm.Data("X", np.zeros(shape))
        with pytest.raises(ValueError, match=rf"matrix of shape \(n, p\); got {len(shape)} "):
            pmt.BARTTree("f", Xd, leaf_sd=1.0)


def test_noise_prior_reads_gaps_and_categories():
    """The least-squares residual sd behind noise_prior, with gaps and a category, equals a
    hand-built design: the category's indicators and the gap-filled column with its gap
    indicator."""
    rng = np.random.default_rng(8)
    n = 90
    x = rng.uniform(size=n)
    shop = rng.choice(["n", "s", "w"], n)
    y = 2 * x + (shop == "s") + 0.3 * rng.normal(size=n)
    x_gap = np.where(rng.uniform(size=n) < 0.2, np.nan, x)
    df = pd.DataFrame({"x": x_gap, "shop": pd.Categorical(shop)})
    got = pmt.noise_prior(df, y)
    gap = np.isnan(x_gap)
    D = np.column_stack([np.where(gap, np.nanmean(x_gap), x_gap), gap, shop == "s",
                         shop == "w"]).astype(float)
    assert got == pytest.approx(pmt.noise_prior(D, y), rel=1e-12)
    # a numpy X with NaN: same reading as the frame's numeric column
    assert pmt.noise_prior(x_gap[:, None], y) == pytest.approx(pmt.noise_prior(D[:, :2], y),
                                                              rel=1e-12)
    with pytest.raises(ValueError, match="finite"):
        pmt.noise_prior(df, np.where(gap, np.nan, y))


@pytest.mark.parametrize("step, kwargs, match", [
    ("pg", {"num_particles": 1}, "num_particles must be an integer of at least 2"),
    ("pg", {"num_particles": 2.5}, "num_particles must be"),
    ("cgm", {"warm_start": True}, "warm_start must be None or a non-negative integer"),
    ("cgm", {"warm_start": float("nan")}, "warm_start must be None or a non-negative"),
    ("cgm", {"warm_start": float("inf")}, "warm_start must be None or a non-negative"),
    ("cgm", {"warm_start": "3"}, "warm_start must be None or a non-negative"),
    ("cgm", {"sweeps": float("nan")}, "sweeps must be a positive integer"),
    ("cgm", {"burn_in": np.True_}, "burn_in must be a positive integer"),
])
def test_a_steps_counts_are_whole_numbers_named_when_refused(step, kwargs, match):
    """A tree step's counts are refused by name when they are not whole numbers in range:
    one particle (conditional SMC then always keeps the reference tree, so the trees never
    leave their start), a bool, NaN, infinity or a string as a number of warm-start
    iterations, sweeps or burn-in iterations; whole numbers given as floats are taken."""
    X = np.random.default_rng(0).uniform(size=(30, 2))
    y = X[:, 0] + 0.1 * np.random.default_rng(1).normal(size=30)
    cls = pmt.PGTreeStep if step == "pg" else pmt.CGMTreeStep
    with pm.Model():
        f = pmt.BARTTree("f", X, y, m=3, response="constant")
        pm.Normal("y", f, 1.0, observed=y)
        with pytest.raises(ValueError, match=match):
            cls([f], **kwargs)
        ok = cls([f], **{k: 3.0 for k in kwargs})
    assert all(getattr(ok, k) == 3 and type(getattr(ok, k)) is int for k in kwargs)


@pytest.mark.parametrize("case, rows", [("negative_counts", list(range(6))),
                                        ("gamma_at_or_below_zero", [3, 7]),
                                        ("negative_exposure", [5])])
def test_log_gamma_leaves_refuse_data_outside_the_support_naming_the_rows(case, rows):
    """With log-gamma leaves (the default for a Poisson or a Gamma mean through ``exp``)
    every value of the term is valid, so a start of zero density comes from the data:
    negative counts, a Gamma outcome at or below 0, an exposure below 0.  The step refuses
    them with the rows, as it does with normal leaves (before, the sweep ran on: a mean of f
    moved by the impossible rows, or NaN draws)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(60, 2))
    y = rng.poisson(2.0, 60)
    with pm.Model():
        if case == "negative_counts":
            yb = y.copy()
            yb[:6] = -3
            f = pmt.BARTTree("f", X, Y=np.abs(yb), m=3, link="log")
            pm.Poisson("y", mu=pm.math.exp(f), observed=yb)
        elif case == "gamma_at_or_below_zero":
            yg = y + 0.5
            yg[3], yg[7] = 0.0, -0.5
            f = pmt.BARTTree("f", X, Y=np.abs(yg) + 0.1, m=3, link="log")
            pm.Gamma("y", alpha=4.0, beta=4.0 * pm.math.exp(-f), observed=yg)
        else:
            t = np.ones(60)
            t[5] = -1.0
            f = pmt.BARTTree("f", X, Y=y, m=3, link="log")
            pm.Poisson("y", mu=t * pm.math.exp(f), observed=y)
        with pytest.raises(ValueError, match=rf"zero density .* at {len(rows)} of 60 rows "
                                             rf"\({re.escape(str(rows))}\).*support"):
            pmt.CGMTreeStep([f])


class _ForeignFrame:
    """A data frame of another library (as polars' is): the interchange protocol's
    ``__dataframe__``, ``columns`` and ``__array__``, which reads the columns by position."""

    def __init__(self, df: pd.DataFrame):
        self._df = df
        self.columns = [str(c) for c in df.columns]
        self.shape = df.shape

    def __dataframe__(self, nan_as_null=False, allow_copy=True):
        return self._df.__dataframe__(nan_as_null=nan_as_null, allow_copy=allow_copy)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._df.to_numpy(), dtype=dtype)

    def __len__(self):
        return self.shape[0]


def test_a_foreign_data_frame_is_read_by_column_name_at_build_and_at_predict():
    """A data frame of another library (polars, through the interchange protocol) is read as
    a pandas frame: by column name when the term is built and at prediction, so a frame whose
    columns come in another order predicts the same (before, ``pmt.predict`` read it by
    position: a difference of 4.83 from the trace)."""
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"a": rng.uniform(size=50), "b": rng.uniform(size=50)})
    y = 3 * df["a"].to_numpy() + 0.1 * rng.normal(size=50)
    with pm.Model():
        f = pmt.BARTTree("f", _ForeignFrame(df), Y=y, m=5, response="constant")
        assert f.owner.op.columns == ("a", "b")
        pm.Normal("y", f, 0.3, observed=y)
        idata = pm.sample(tune=5, draws=5, chains=1, random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
    swapped = _ForeignFrame(df[["b", "a"]])
    got = pmt.predict(idata, swapped).values
    want = pmt.predict(idata, df).values
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(want, idata.posterior["f"].values)


def test_float32_floatx_is_refused_naming_the_setting():
    """With ``pytensor.config.floatX = "float32"`` the README's model failed inside PyMC
    (``NoiseGibbs.competence() missing 1 required positional argument``, or a Vector(float32)
    that cannot store float64): the term is refused when declared, naming floatX."""
    import pytensor

    X = np.random.default_rng(0).uniform(size=(20, 2))
    y = X[:, 0]
    with pytensor.config.change_flags(floatX="float32"), pm.Model():
        with pytest.raises(ValueError, match=r"floatX is 'float32'.*floatX = 'float64'"):
            pmt.BARTTree("f", X, Y=y, m=3)
    with pm.Model():
        pmt.BARTTree("f", X, Y=y, m=3)  # float64: built
