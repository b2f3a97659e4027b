"""pmt.compare, its command line and its HTML report (small m and draws: well under a minute).

The metric functions are checked against closed forms and numerical integrals of their
definitions; the report is parsed with html.parser and every figure must be an inline PNG.
"""

from __future__ import annotations

import base64
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from pymc_trees.comparison.run import (LEVEL, compare, crps_bernoulli, crps_normal, crps_poisson,
                                crps_sample, interval_coverage, load_data, reliability_bins)
from pymc_trees.comparison.report import FIGURES

FAST = dict(m=10, draws=40, tune=40, progress=False)


# --- metrics against their definitions ------------------------------------------------------


def test_crps_sample_hand_case():
    # empirical distribution of {0, 1}: F = 0.5 on [0, 1); CRPS = int (F - 1[x >= y])^2
    draws = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    y = np.array([0.0, 0.5, 2.0])
    np.testing.assert_allclose(crps_sample(draws, y), [0.25, 0.25, 1.25])


def test_crps_sample_is_the_integral_of_its_empirical_cdf():
    rng = np.random.default_rng(0)
    x = rng.normal(size=7)
    for y in (-0.3, 0.1, 2.5):
        grid = np.linspace(-8, 8, 400_001)
        F = (x[None, :] <= grid[:, None]).mean(axis=1)
        direct = np.trapezoid((F - (grid >= y)) ** 2, grid)
        assert crps_sample(x[:, None], np.array([y]))[0] == pytest.approx(direct, abs=1e-3)


def test_crps_normal_closed_form_against_integral_and_a_sample():
    assert crps_normal(0.0, 1.0, 0.0) == pytest.approx(2 / np.sqrt(2 * np.pi)
                                                      - 1 / np.sqrt(np.pi))
    rng = np.random.default_rng(1)
    mu, sigma, y = np.array([0.5, -1.0, 3.0]), np.array([1.0, 2.0, 0.3]), np.array([0.0, 1.5, 3.1])
    closed = crps_normal(mu, sigma, y)
    for j in range(3):
        d = stats.norm(mu[j], sigma[j])
        a = integrate.quad(lambda t: d.cdf(t) ** 2, -np.inf, y[j])[0]
        b = integrate.quad(lambda t: d.sf(t) ** 2, y[j], np.inf)[0]
        assert closed[j] == pytest.approx(a + b, rel=1e-6)
    draws = mu + sigma * rng.standard_normal((200_000, 3))
    np.testing.assert_allclose(crps_sample(draws, y), closed, rtol=0.01)


def test_crps_poisson_against_its_definition_and_a_sample():
    mu = np.array([0.3, 4.0, 25.0])
    y = np.array([2, 4, 17])
    direct = [sum((stats.poisson.cdf(k, m) - (yy <= k)) ** 2 for k in range(400))
              for m, yy in zip(mu, y)]
    np.testing.assert_allclose(crps_poisson(mu, y), direct, rtol=1e-9)
    # a point mass at 0 (mu tiny) and y = 2: the two CDFs differ by 1 on [0, 2)
    assert crps_poisson(1e-9, 2)[0] == pytest.approx(2.0, abs=1e-6)
    draws = np.random.default_rng(2).poisson(mu, size=(100_000, 3))
    np.testing.assert_allclose(crps_sample(draws, y), direct, rtol=0.02)


def test_crps_bernoulli_is_the_crps_of_0_1_draws():
    draws = np.repeat(np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 0])[:, None], 2, axis=1)  # p = 0.3
    y = np.array([0, 1])
    np.testing.assert_allclose(crps_sample(draws, y), [0.09, 0.49])
    np.testing.assert_allclose(crps_bernoulli([0.3, 0.3], y), [0.09, 0.49])


def test_interval_coverage_counts_the_ends_and_refuses_crossed_intervals():
    cov, width = interval_coverage([0, 0, 0, 1], [1, 1, 1, 3], [0, 1, 1.5, 0.5])
    assert cov == 0.5 and width == 1.25  # widths 1, 1, 1, 2; y = 1.5 and 0.5 outside
    with pytest.raises(ValueError, match="lo <= hi"):
        interval_coverage([1], [0], [0.5])


def test_reliability_bins_hand_case():
    bins = reliability_bins([0.05, 0.15, 0.95, 1.0], [0, 1, 1, 0])
    assert bins["n"].tolist() == [1, 1, 2]
    assert bins["lower"].tolist() == [0.0, 0.1, 0.9]
    np.testing.assert_allclose(bins["mean_predicted"], [0.05, 0.15, 0.975])
    np.testing.assert_allclose(bins["observed"], [0.0, 1.0, 0.5])


def test_probability_scores_refuse_what_would_score_silently_wrong():
    # a probability below 0 fell in no bin (dropped), classes coded 1/2 scored as numbers
    with pytest.raises(ValueError, match="p must hold probabilities"):
        reliability_bins([-0.2, 0.5], [0, 1])
    with pytest.raises(ValueError, match="p must hold probabilities"):
        crps_bernoulli([30.0], [1])
    with pytest.raises(ValueError, match="0/1 outcomes"):
        crps_bernoulli([0.3, 0.7], [1, 2])
    with pytest.raises(ValueError, match="bins must be a positive integer"):
        reliability_bins([0.5], [1], bins=0)
    from pymc_trees.comparison import friedman1_f
    with pytest.raises(ValueError, match="p >= 5"):
        friedman1_f(np.ones((3, 4)))


# --- data -----------------------------------------------------------------------------------


def _table(n=90, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n, 2))
    g = rng.choice(["a", "b", "c"], n)
    y = 4 * np.sin(3 * x[:, 0]) + 2 * x[:, 1] + 1.5 * (g == "a") + 0.5 * rng.normal(size=n)
    x[::9, 1] = np.nan
    return pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "g": g, "y": y,
                         "label": np.where(y > np.median(y), "high", "low"),
                         "visits": rng.poisson(np.exp(0.5 + x[:, 0]))})


def test_load_data_infers_the_task_and_refuses_bad_targets():
    df = _table()
    X, y, info = load_data(df, "label", drop=["y", "visits"])
    assert info["task"] == "classification" and info["positive"] == "low"  # sorted: high, low
    assert set(np.unique(y)) == {0, 1} and list(X.columns) == ["x0", "x1", "g"]
    assert isinstance(X["g"].dtype, pd.CategoricalDtype)
    assert load_data(df, "y")[2]["task"] == "regression"
    with pytest.raises(ValueError, match="binary.*'g' has 3 distinct values"):
        load_data(df, "g", task="classification")
    with pytest.raises(ValueError, match="non-negative integer counts"):
        load_data(df, "y", task="count")


def test_missing_target_column_is_refused_with_the_columns_named():
    with pytest.raises(ValueError, match=r"'price' is not in the data; its columns are "
                                         r"\['x0', 'x1', 'g', 'y', 'label', 'visits'\]"):
        compare(_table(), "price", **FAST)


def test_command_line_refuses_a_missing_target(tmp_path):
    path = tmp_path / "small.csv"
    _table().to_csv(path, index=False)
    run = subprocess.run([sys.executable, "-m", "pymc_trees", "compare", str(path), "--target",
                          "nope"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert "error: The target column 'nope' is not in the data" in run.stderr
    assert "--target COL" in run.stderr


# --- the report -----------------------------------------------------------------------------


class _Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.tables, self.titles = [], 0, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs)
        elif tag == "table":
            self.tables += 1
        elif tag in ("link", "script"):
            raise AssertionError(f"the report must be self-contained; found <{tag} {attrs}>")


def _check_report(path: Path) -> _Images:
    text = path.read_text(encoding="utf-8")
    parser = _Images()
    parser.feed(text)
    parser.close()
    ids = [img.get("id") for img in parser.images]
    assert sorted(ids) == sorted(FIGURES), ids
    for img in parser.images:
        src = img["src"]
        assert src.startswith("data:image/png;base64,"), src[:40]
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
        alt, title = FIGURES[img["id"]]
        assert img["alt"] == alt and img["title"] == title
    assert parser.tables >= 4  # metrics, differences, calibration, per fold
    assert "http://" not in text and "https://" not in text
    return parser


def test_cli_regression_on_a_csv(tmp_path, capsys):
    from pymc_trees.__main__ import main

    path = tmp_path / "small.csv"
    _table().to_csv(path, index=False)
    out = tmp_path / "reg.html"
    status = main(["compare", str(path), "--target", "y", "--drop", "label,visits",
                   "--test-size", "0.3", "--seed", "3", "--m", "10", "--draws", "40", "--out",
                   str(out), "--quiet"])
    printed = capsys.readouterr().out
    assert status == 0
    for word in ("RMSE", "log predictive density", "CRPS", "coverage 90%", "width 90%",
                 "calibration error", "seconds", "BART", "boosting", str(out.resolve())):
        assert word in printed
    _check_report(out)
    assert "Coverage and width of central intervals" in out.read_text()


def test_cli_classification_on_a_csv_with_folds(tmp_path, capsys):
    from pymc_trees.__main__ import main

    path = tmp_path / "small.csv"
    _table().to_csv(path, index=False)
    out = tmp_path / "cls.html"
    status = main(["compare", str(path), "--target", "label", "--drop", "y,visits",
                   "--folds", "3", "--m", "10", "--draws", "40", "--out", str(out), "--quiet"])
    printed = capsys.readouterr().out
    assert status == 0
    assert "log loss" in printed and "3-fold cross-validation, 90 held-out rows" in printed
    _check_report(out)
    assert "Reliability bins" in out.read_text()


# --- metrics of a whole run, recomputed from its per-row predictions ------------------------


@pytest.mark.slow
def test_regression_metrics_agree_with_the_per_row_predictions(tmp_path):
    res = compare(_table(120, seed=5), "y", drop=["label", "visits"], folds=2, seed=1,
                  out=tmp_path / "r.html", **FAST)
    assert res["report"] == res.report and res.report.exists()
    pred, table = res.predictions, res.table
    assert sorted(pred["row"]) == list(range(120))  # every row held out once
    y = pred["y"].to_numpy()
    for mdl in ("BART", "boosting"):
        rmse = np.sqrt(np.mean((pred[f"{mdl}_point"] - y) ** 2))
        assert table.loc[mdl, "RMSE"] == pytest.approx(rmse)
        cov = np.mean((pred[f"{mdl}_lo"] <= y) & (y <= pred[f"{mdl}_hi"]))
        assert table.loc[mdl, f"coverage {LEVEL:.0%}"] == pytest.approx(cov)
        assert table.loc[mdl, "CRPS"] == pytest.approx(pred[f"{mdl}_crps"].mean())
        assert table.loc[mdl, "log predictive density"] == pytest.approx(
            pred[f"{mdl}_lpd"].mean())
    # boosting's plug-in density is Normal(prediction, validation residual sd of its fold)
    sd = res.folds.set_index(["model", "fold"])["boosting plug-in sd"]
    for fold, part in pred.groupby("fold"):
        s = sd[("boosting", fold)]
        np.testing.assert_allclose(part["boosting_lpd"],
                                   stats.norm.logpdf(part["y"], part["boosting_point"], s))
        np.testing.assert_allclose(part["boosting_crps"],
                                   crps_normal(part["boosting_point"], s, part["y"]))
    # calibration: coverage rises with the nominal level for both models' intervals
    for mdl, g in res.calibration.groupby("model"):
        assert np.all(np.diff(g["coverage"]) >= 0) and np.all(np.diff(g["width"]) > 0), mdl
    # a reasonable fit on this easy table: both well below the sd of y
    assert table["RMSE"].max() < 0.8 * y.std()


def test_count_task_runs_with_poisson_likelihoods(tmp_path):
    res = compare(_table(80, seed=2), "visits", task="count", drop=["label", "y"],
                  out=None, seed=0, **FAST)
    assert res.report is None
    assert list(res.table.index) == ["BART", "boosting"]
    pred = res.predictions
    assert np.all(pred["BART_lo"] == np.round(pred["BART_lo"]))  # draws of counts
    y = pred["y"].to_numpy()
    np.testing.assert_allclose(pred["boosting_lpd"],
                               stats.poisson.logpmf(y, pred["boosting_point"]))
    assert res.table.loc["BART", "CRPS"] > 0


# --- refused input: clear messages before any fit -----------------------------------------


REFUSED = dict(FAST, out=None)  # never a report, even if a refusal regresses


def _cli_error(args, capsys, tmp_path) -> str:
    """Run the command line in-process on refused input: status 1, the message on stderr."""
    from pymc_trees.__main__ import main

    status = main(["compare", *map(str, args), "--quiet", "--m", "5", "--draws", "10",
                   "--out", str(tmp_path / "unused.html")])
    err = capsys.readouterr().err
    assert status == 1, err
    assert err.startswith("error: ")
    return err


def _small(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": rng.uniform(size=n), "y": rng.normal(size=n)})


def test_header_only_csv_says_it_has_no_rows(tmp_path, capsys):
    path = tmp_path / "header.csv"
    path.write_text("x,g,y\n")
    for extra in (["--target", "y"], ["--target", "nope"], []):  # no rows comes first
        err = _cli_error([path, *extra], capsys, tmp_path)
        assert f"The file '{path}' has no rows, only the columns ['x', 'g', 'y']" in err
        assert "distinct values" not in err
    with pytest.raises(ValueError, match="The DataFrame has no rows"):
        compare(pd.DataFrame(columns=["x", "y"]), "y", **REFUSED)


def test_empty_file_and_all_missing_target_are_named(tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert f"The file '{empty}' is empty: no header line and no rows" in _cli_error(
        [empty, "--target", "y"], capsys, tmp_path)
    path = tmp_path / "gaps.csv"
    pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [np.nan] * 3}).to_csv(path, index=False)
    err = _cli_error([path, "--target", "y"], capsys, tmp_path)
    assert f"The target column 'y' of the file '{path}' is missing in all its 3 rows" in err
    assert "--target COL" in err


def test_constant_target_is_refused_as_nothing_to_model(tmp_path, capsys):
    df = _small(30).assign(y=5.0, label="yes")
    path = tmp_path / "const.csv"
    df.to_csv(path, index=False)
    for target, shown in (("y", "y = 5.0"), ("label", "label = 'yes'")):
        err = _cli_error([path, "--target", target], capsys, tmp_path)
        assert f"The target column '{target}' of the file '{path}' is constant" in err
        assert shown in err and "nothing to model" in err
        assert "leaf_sd" not in err
    for task in ("regression", "count", "classification"):
        with pytest.raises(ValueError, match="'y' of the DataFrame is constant: all 30 rows"):
            compare(df, "y", task=task, drop=["label"], **REFUSED)


def test_too_few_rows_for_min_leaf_names_the_option(tmp_path, capsys):
    path = tmp_path / "tiny.csv"
    _small(12).to_csv(path, index=False)
    err = _cli_error([path, "--target", "y"], capsys, tmp_path)
    assert "Lower min_leaf." not in err
    assert (f"the file '{path}' has 12 rows with a target value, and holding out 30% leaves 8 "
            "training rows; BART's min_leaf = 5 needs at least 2 * 5 = 10") in err
    assert "(--min-leaf 4)" in err
    err = _cli_error([path, "--target", "y", "--folds", "3", "--min-leaf", "5"], capsys,
                     tmp_path)
    assert "3-fold cross-validation leaves as few as 8 training rows per fold" in err
    with pytest.raises(ValueError, match=r"leaves as few as 6 training rows per fold; BART's "
                                         r"min_leaf = 4 needs at least 2 \* 4 = 8"):
        compare(_small(8), "y", folds=4, min_leaf=4, **REFUSED)
    with pytest.raises(ValueError, match=r"min_leaf \(--min-leaf\) must be an integer >= 1"):
        compare(_small(30), "y", min_leaf=0, **REFUSED)
    with pytest.raises(ValueError, match=r"leaf_sd \(--leaf-sd\) must be a positive number"):
        compare(_small(30), "y", leaf_sd=-1.0, **REFUSED)


def test_fewer_rows_than_folds_names_the_input_and_the_fix(tmp_path, capsys):
    path = tmp_path / "three.csv"
    _small(3).to_csv(path, index=False)
    err = _cli_error([path, "--target", "y", "--folds", "5"], capsys, tmp_path)
    assert f"The file '{path}' has 3 rows with a target value" in err
    assert "use at most 1" not in err and "at least 4 rows for folds=2" in err
    err = _cli_error([path, "--target", "y"], capsys, tmp_path)
    assert "one held-out split needs at least 6" in err
    path = tmp_path / "seven.csv"
    _small(7).to_csv(path, index=False)
    err = _cli_error([path, "--target", "y", "--folds", "5"], capsys, tmp_path)
    assert f"folds=5 is too many for the 7 rows with a target value of the file '{path}'" in err
    assert "(--folds 3)" in err


def test_a_fold_with_one_target_value_is_refused_before_any_fit(monkeypatch):
    import pymc_trees.comparison.run as cmp

    def no_fit(*args, **kwargs):
        raise AssertionError("refused input must fail before any fit")

    monkeypatch.setattr(cmp, "_fit_bart", no_fit)
    df = _small(24)
    df["y"] = 0
    df.loc[5, "y"] = 1  # held out in one of the two folds: its training rows are all 0
    with pytest.raises(ValueError, match=r"training rows hold one target value only \(0\)"):
        compare(df, "y", task="count", folds=2, **REFUSED)
    df["label"] = np.where(df["y"] == 1, "yes", "no")
    with pytest.raises(ValueError, match="training rows hold one class only.*more folds"):
        compare(df.drop(columns="y"), "label", folds=2, **REFUSED)


def test_cli_passes_min_leaf_and_leaf_sd_to_the_bart_term(tmp_path, capsys, monkeypatch):
    import pymc_trees.bart
    from pymc_trees.__main__ import main

    seen = []
    real = pymc_trees.bart.BARTTree

    def spy(*args, **kwargs):
        seen.append({k: kwargs.get(k) for k in ("min_leaf", "leaf_sd")})
        return real(*args, **kwargs)

    monkeypatch.setattr(pymc_trees.bart, "BARTTree", spy)
    path = tmp_path / "tiny.csv"
    _small(12).to_csv(path, index=False)
    status = main(["compare", str(path), "--target", "y", "--min-leaf", "4", "--leaf-sd",
                   "0.5", "--m", "5", "--draws", "10", "--chains", "1", "--out",
                   str(tmp_path / "tiny.html"), "--quiet"])
    assert status == 0, capsys.readouterr().err
    assert seen == [{"min_leaf": 4, "leaf_sd": 0.5}]
    assert "min_leaf = 4 (default 5), leaf_sd = 0.5" in (tmp_path / "tiny.html").read_text()


@pytest.mark.slow
def test_folds_run_on_a_local_dask_cluster_give_the_serial_table():
    """The 2 x K fits are joblib jobs: under joblib.parallel_config(backend="dask") they run
    on a distributed.LocalCluster of two worker processes, with the table of the serial run
    for the same seed (every column but the seconds)."""
    distributed = pytest.importorskip("distributed")
    import joblib

    data = _table(100, seed=7)
    kw = dict(drop=["label", "visits"], folds=2, seed=3, out=None, **FAST)
    serial = compare(data, "y", **kw)
    lines = []
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        with joblib.parallel_config(backend="dask"), \
                distributed.get_task_stream(client) as stream:
            dist = compare(data, "y", log=lines.append, progress=True,
                           **{k: v for k, v in kw.items() if k != "progress"})
        workers = set(client.scheduler_info()["workers"])
    # the fits ran as tasks on the cluster's workers (joblib may batch jobs into a task)
    fits = [t for t in stream.data if "fit_learner" in str(t["key"])]
    calls = sum(int(re.search(r"fit_learner_(\d+)_calls", str(t["key"])).group(1))
                for t in fits)
    assert calls == 4 and {t["worker"] for t in fits} <= workers  # 2 folds x 2 learners
    assert any("through joblib" in ln for ln in lines)
    for a, b in ((serial.table, dist.table), (serial.folds, dist.folds)):
        cols = [c for c in a.columns if c != "seconds"]
        pd.testing.assert_frame_equal(a[cols], b[cols])
    pd.testing.assert_frame_equal(serial.predictions, dist.predictions)
